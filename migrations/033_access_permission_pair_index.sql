-- docs/api-reference.md 14: a bulk job finds each access permission again by its natural key, resident and lock group
-- first (findEquivalentPermissions, src/db/repositories/access-permission.repo.ts). With an index on each of them
-- alone, a plan made while the table's statistics lag behind (a new tenant's import: the table grows by thousands of
-- rows a second) could take the lock group's index and filter every permission of the group for each item, so an
-- import of one building's residents into one group grew with the square of its size. One index on the pair is the
-- choice with statistics or without, and serves every statement the resident's own index served (its prefix).
CREATE INDEX access_permissions_resident_group_idx ON access_permissions (tenant_id, resident_id, lock_group_id);
DROP INDEX access_permissions_resident_idx;
