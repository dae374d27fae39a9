-- Password-grant attempts keyed by (tenant, username) instead of the free `user@tenant` string (contract 3.2):
-- only logins of the client's own tenant are counted, and the username is bounded like the API's (1 to 128 chars).
ALTER TABLE login_failures RENAME TO login_failures_by_login;

CREATE TABLE login_failures (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  username text NOT NULL CHECK (length(username) BETWEEN 1 AND 128),
  -- Attempts in the current window, counted before the password is checked; never more than the threshold + 1.
  attempts integer NOT NULL,
  first_attempt_at bigint NOT NULL,
  locked_until bigint,
  PRIMARY KEY (tenant_id, username)
);

-- Running counts and locks survive the upgrade. Tenant names hold no `@`, so the login ends in `@` + exactly one
-- tenant's name; rows naming no tenant, or a username the API would refuse, were never anyone's and are dropped.
INSERT INTO login_failures (tenant_id, username, attempts, first_attempt_at, locked_until)
SELECT t.id, left(o.login, length(o.login) - length(t.name) - 1), o.failures, o.first_failure_at, o.locked_until
  FROM login_failures_by_login o
  JOIN tenants t ON right(o.login, length(t.name) + 1) = '@' || t.name
 WHERE length(o.login) - length(t.name) - 1 BETWEEN 1 AND 128;

DROP TABLE login_failures_by_login;
