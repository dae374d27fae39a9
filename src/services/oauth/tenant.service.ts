// Tenants (docs/api-reference.md 2): created by the CLI together with their management client.
import type { Database } from '../../db/database.js';
import { findConsoleClientId } from '../../db/repositories/client.repo.js';
import { findTenantByName, insertTenant, type Tenant } from '../../db/repositories/tenant.repo.js';
import { BadRequestError, ConflictError, NotFoundError } from '../../errors.js';
import { CONSOLE_REDIRECT_PATH, type ClientService } from './client.service.js';
import type { Clock } from '../context.js';
import { MANAGEMENT_SCOPES } from '../../shared/scopes.js';

/** Tenant names appear after the last `@` of a login, so they hold no `@` and no white space. */
export const TENANT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export interface TenantServiceOptions {
  db: Database;
  clock: Clock;
  clients: ClientService;
}

export function createTenantService(options: TenantServiceOptions) {
  const { db, clock, clients } = options;
  return {
    /**
     * The tenant, its management client (whose secret is shown only here) and the console's public client
     * (docs/api-reference.md 13).
     */
    async create(name: string): Promise<{ tenant: Tenant; clientId: string; clientSecret: string; consoleClientId: string }> {
      if (!TENANT_NAME_PATTERN.test(name)) {
        throw new BadRequestError(
          'A tenant name has 1 to 63 characters: letters, digits, `.`, `_` and `-`, starting with a letter or digit.',
        );
      }
      const created = await db.transaction(async (tx) => {
        const tenant = await insertTenant(tx, name, clock());
        if (!tenant) return null;
        const context = { tenantId: tenant.id, actor: 'cli', requestId: null };
        const client = await clients.createIn(tx, context, { name: `${name} management`, scopes: MANAGEMENT_SCOPES });
        const console = await clients.createConsoleIn(tx, context);
        return { tenant, clientId: client.clientId, clientSecret: client.clientSecret, consoleClientId: console.clientId };
      });
      if (!created) throw new ConflictError(`The tenant ${name} exists already.`);
      return created;
    },

    async byName(name: string): Promise<Tenant> {
      const tenant = await findTenantByName(db, name);
      if (!tenant) throw new NotFoundError(`No tenant ${name}.`);
      return tenant;
    },

    /**
     * The client id the console signs in with for the tenant named `name` (docs/console.md): public knowledge, as the
     * tenant's name and key set are. NotFoundError for an unknown tenant or one whose console client was deleted.
     */
    async consoleClientId(name: string): Promise<string> {
      const tenant = await this.byName(name);
      const clientId = await findConsoleClientId(db, tenant.id, CONSOLE_REDIRECT_PATH);
      if (!clientId) throw new NotFoundError(`The tenant ${name} has no console client.`);
      return clientId;
    },
  };
}

export type TenantService = ReturnType<typeof createTenantService>;
