// Applied migrations never change: the migrator refuses to start on a database whose recorded checksum of an applied
// file differs from the file (src/db/migrate.ts), so an edit to a released migration, even to a comment, would stop
// every installation that applied it. Each file's SHA-256 is pinned here; a new migration adds its line.
import { describe, expect, it } from 'vitest';
import { readMigrations } from '../../src/db/migrate.js';

const RELEASED: Record<string, string> = {
  '001_tenants.sql': 'b47e2bc4c6fcf1e9cc7d2e967feef13cc171ac80a3ab5deb5ebfb72046b7c2fb',
  '002_oauth.sql': 'f8ba191b5b9da0dd8848390ffb4807d103ee9a1c6839ba7cd08d8c4d2e0cfe56',
  '003_operator_api.sql': '860061e5c73dbb26081cf81326cc4b094450b2cb7a84edee44e78fbb6a05b4ef',
  '004_access_api.sql': 'a147b170b9f050bc0a05721242c4fc505710fa5f23118d910bf3a352667ccd4f',
  '005_device_api.sql': '8ad92e591255c38c2a4cf75e554a28d182aa784080f22f87d5597c7687e6d077',
  '006_client_secret_rotations.sql': 'ec98ede57017d17a21fb6271305d87ff902f24c076bc9ac95995a9ad18d4334f',
  '007_login_failures.sql': 'c186ba7a8ea2b4bad567ca4d142921e70627d5064fbb17cdfff97d04f551b360',
  '008_audit_sequence_idempotency_client.sql': 'd1dcb85f3d9e829238a964b3c6df58a87a32d0b4f9bed8f9be2e22485079bf18',
  '009_lock_trust.sql': 'a2f60d86d1dac35d5f44fd1369826c4d6346efac9ceb9ef5238b4eaa371063fe',
  '010_decommissioned_client_revocations.sql': '402b33976ac623bc6155876416a2c52036b0beb12be448fe0220d7bb437ffa9c',
  '011_lock_telemetry.sql': '950710c22a8307e7ae2ae3b451e619a18f14d3d2101ad08dcd5cc6ab73e1dc60',
  '012_schedules.sql': '562fbe1c1a6d063c914c0aa7c89498b3c8ff371eefd45c0d57fea6de231495b3',
  '013_event_log_webhooks.sql': 'beadba81a67dea8cef50614eed54f86365b90813414156d1959b1df0b9c00712',
  '014_event_types.sql': '3ff81bbc79bd7bfbbb6913fcd28f4fbdd52c72051298a10e21525accedda48f3',
  '015_webhook_delivery_claims.sql': 'a9e68d8a42a4b27844a7d72fccdfcfae9358411f017f91209186c28b0e614cde',
  '016_tenant_keys.sql': '6d8b528dc07aecdf05f4e0501c89c5106293fff3e9b008e276b489b2376bcaf3',
  '017_tenant_change_notify.sql': '3f369ba68538a6b5a1347a17b5d21b26b5301722f5a2f3c09ce2b9d4f488e9a0',
  '018_webhook_send_cursor.sql': '73fb25d39c2b4fd52990557a131ab0eee8dd3e8d0561913e3c59729e45a78ccc',
  '019_foreign_key_indexes.sql': '741ded5895933ed629a458f31d0cce8f70dd5507fdd8397e69ca34f992dfdf33',
  '020_holder_keys.sql': '97f4770825ec18ca99cb04973c415b6cd93c33c6454f904058d973066fed6137',
  '021_signed_reports.sql': '428cabe6f7725bb74084b483eb05f9fb58bb1118b3c095b10c30efa3229e5cee',
  '022_access_log_budget.sql': '3bbfa2271a8ad4c12d796be4416e4e91fc9c0345bb30c9571cc7cda937ea2248',
  '023_key_binding.sql': 'bfa51c242217371d637007b7a493f6cf106168ff705bae4fbcb0b969def1b84d',
  '024_ticket_key_announcements.sql': '4dd28751785344a638fb9c329bf59299dd47ea5fbb7a4d4d6b923e33f166076a',
  '025_claims.sql': '6df5b0653dd7b3ca30429a1edbcbcd868bea5930e0d14dc13a5d2d10a910274f',
  '026_bulk_jobs.sql': '76c449420ee74ede5a73d828bae6e3b33bbe775ce0b838d6386ee246542b569a',
  '027_lockdowns.sql': 'd93db339ca04c176731cdfe2ec5b5961d899907766d0e340f21d73abab8e45e5',
  '028_console_sign_in.sql': 'ad9a6dddebca19789c52a4931c19f0ee7f14707965638c08f58e0048bac76ca8',
  '029_tenant_retention.sql': '20552b0ce5681bf36a29770dc5c69af941ab82a82c4e116e90f491682bb693b4',
  '030_erasures.sql': '394271348d19c2f29c1594537efa17d2d2d5d224abf792ed2ccee67e2473b49a',
  '031_erasure_jobs.sql': '8b0fb0f7ca7cff6a49d47e3f476bd6b886808d899457d24133ada83e7d6c9e55',
  '032_change_notify_from_application.sql': 'a39cd2c5643028aa42fc7ee78f733ca9f0eaafe7ba6785f407babc82f5f9f7b9',
  '033_access_permission_pair_index.sql': '649810031c880077dc15f0be0ba31d7764952ea1b785b0df620243160c6c537d',
  '034_issue_tickets_function.sql': '560880fc8ac6dfa151fa54a7cd97aa8d336aa8cbbe12030ac99f82f854c6eca5',
  '035_issue_tickets_local_statements.sql': '4284c32c028e5844e6cada12e7794e9738259236c8892351295dfa898062012b',
  '036_permission_tickets_one_node.sql': '3f9d74e9953a5780575f06fe7a9de142d8ab18accba6924035da5e00a031e9a0',
  '037_lock_contact_one_node.sql': '95706f147cdffeb558f59cfb28988e5fff1f8a7f116bcbb06825ba41d3917a92',
  '038_page_indexes_for_pages_only.sql': '32ea1798c5c7ad451dd3a9419d6a725b1db47fc7e18ac40bebc7616ddda53308',
};

describe('released migrations', () => {
  const migrations = readMigrations();
  const file = (migration: { version: number; name: string }) => `${String(migration.version).padStart(3, '0')}_${migration.name}.sql`;

  it('keep the checksum they were released with, byte for byte', () => {
    const changed = migrations.filter((migration) => RELEASED[file(migration)] !== undefined && RELEASED[file(migration)] !== migration.checksum);
    expect(changed.map(file), 'a released migration was edited: restore it and put the change in a new NNN_name.sql').toEqual([]);
  });

  it('are all still there', () => {
    const present = new Set(migrations.map(file));
    expect(Object.keys(RELEASED).filter((name) => !present.has(name))).toEqual([]);
  });

  it('pin every migration, so a new one is released with its checksum', () => {
    expect(migrations.map(file).filter((name) => RELEASED[name] === undefined), 'add the new file and its SHA-256 to RELEASED').toEqual([]);
  });
});
