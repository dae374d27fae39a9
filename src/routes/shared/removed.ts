// Removed interfaces (contract 4.4): 410 with Sunset and a successor link, unless an operator keeps one alive.
import type { FastifyReply } from 'fastify';
import { GoneError } from '../../errors.js';
import { DEPRECATIONS, deprecationHeaders, removalNotice, type Deprecation } from '../../services/deprecations.js';
import { REMOVED_NFC_CHANNEL, type RevivedInterfaces } from '../../services/vocabulary.js';

/** Throws the 410 for a removed interface; when it is kept alive, adds the deprecation headers and returns. */
export function removedInterface(reply: FastifyReply, revived: RevivedInterfaces, deprecation: Deprecation, successorLink?: string): void {
  const alive = revived.has(deprecation.key);
  const headers = deprecationHeaders(deprecation, alive, successorLink);
  if (!alive) {
    throw new GoneError(removalNotice(deprecation), headers, { successor: deprecation.successor });
  }
  reply.headers(headers);
}

/**
 * A kept-alive channel works as it did, with `Deprecation` and `Sunset` (contract 4.4): an answer whose channels name
 * `nfccard` (possible only when an operator revived it) carries both.
 */
export function markRevivedChannels(reply: FastifyReply, channels: readonly string[]): void {
  if (channels.includes(REMOVED_NFC_CHANNEL)) reply.headers(deprecationHeaders(DEPRECATIONS.nfcCardChannel, true));
}
