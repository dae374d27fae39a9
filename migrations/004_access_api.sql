-- Access API (contract 5): residents (a person's devices), lock groups, and access permissions that expand into
-- one ticket per (device in the resident) × (lock in the lock group).

CREATE TABLE residents (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL,
  name text NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX residents_page_idx ON residents (tenant_id, created_at, id);

-- Removing a device through the Operator API removes it from its residents (ON DELETE CASCADE).
CREATE TABLE resident_devices (
  tenant_id uuid NOT NULL,
  resident_id uuid NOT NULL,
  mobile_device_id text NOT NULL,
  PRIMARY KEY (tenant_id, resident_id, mobile_device_id),
  FOREIGN KEY (tenant_id, resident_id) REFERENCES residents (tenant_id, id) ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, mobile_device_id) REFERENCES mobile_devices (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX resident_devices_device_idx ON resident_devices (tenant_id, mobile_device_id);

CREATE TABLE lock_groups (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL,
  name text NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX lock_groups_page_idx ON lock_groups (tenant_id, created_at, id);

CREATE TABLE lock_group_objects (
  tenant_id uuid NOT NULL,
  lock_group_id uuid NOT NULL,
  secured_object_id text NOT NULL,
  PRIMARY KEY (tenant_id, lock_group_id, secured_object_id),
  FOREIGN KEY (tenant_id, lock_group_id) REFERENCES lock_groups (tenant_id, id) ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, secured_object_id) REFERENCES secured_objects (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX lock_group_objects_object_idx ON lock_group_objects (tenant_id, secured_object_id);

CREATE TABLE access_permissions (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  resident_id uuid NOT NULL,
  lock_group_id uuid NOT NULL,
  begin_date bigint NOT NULL,
  end_date bigint NOT NULL,
  commands text[] NOT NULL,
  channels text[] NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, resident_id) REFERENCES residents (tenant_id, id),
  FOREIGN KEY (tenant_id, lock_group_id) REFERENCES lock_groups (tenant_id, id),
  CHECK (begin_date >= 0 AND begin_date < end_date AND end_date <= 8640000000000000)
);
CREATE INDEX access_permissions_page_idx ON access_permissions (tenant_id, created_at, id);
CREATE INDEX access_permissions_resident_idx ON access_permissions (tenant_id, resident_id);
CREATE INDEX access_permissions_lock_group_idx ON access_permissions (tenant_id, lock_group_id);

-- Tickets a permission made carry its id; tickets made through the Operator API have none and are never touched
-- by membership rules.
ALTER TABLE tickets ADD COLUMN access_permission_id uuid;

-- At most one live ticket per (permission, device, lock), whatever runs concurrently; a revoked one may be followed
-- by a new one when the device or lock joins again.
CREATE UNIQUE INDEX tickets_permission_pair_idx ON tickets (access_permission_id, mobile_device_id, secured_object_id)
  WHERE access_permission_id IS NOT NULL AND revoked_at IS NULL;
CREATE INDEX tickets_permission_page_idx ON tickets (tenant_id, access_permission_id, created_at, id)
  WHERE access_permission_id IS NOT NULL;
