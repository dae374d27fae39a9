-- Tenants: one operator each; every other row belongs to exactly one (contract 2).
CREATE TABLE tenants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL UNIQUE,
  created_at bigint NOT NULL
);
