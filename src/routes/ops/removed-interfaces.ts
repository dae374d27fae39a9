// Removed interfaces that no configuration revives (docs/api-reference.md 4.4): they answer 410 to anyone, naming the successor.
import type { FastifyInstance } from 'fastify';
import { DEPRECATIONS } from '../../shared/deprecations.js';
import { removalError } from '../shared/removed.js';

/** The lock-server binary sync (removed 01.01.2018) had no documented format to revive; its successor is 6.2. */
const LOCKSERVER_PATHS = ['/operatorapi/tickets/lockserver/binary', '/deviceapi/tickets/lockserver/binary'];

export default async function removedInterfaceRoutes(app: FastifyInstance) {
  const gone = async () => {
    throw removalError(DEPRECATIONS.lockSync);
  };
  for (const path of LOCKSERVER_PATHS) app.get(path, gone);
}
