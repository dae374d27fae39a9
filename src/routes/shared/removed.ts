// Removed interfaces (docs/api-reference.md 4.4): 410 with Sunset and a successor link, unless an operator keeps one alive.
import type { FastifyReply } from 'fastify';
import { GoneError } from '../../errors.js';
import { DEPRECATIONS, deprecationHeaders, removalNotice, type Deprecation } from '../../shared/deprecations.js';
import { REMOVED_NFC_CHANNEL, type RevivedInterfaces } from '../../shared/vocabulary.js';

/**
 * The 410 for a removed interface, built only from its registry entry: the removal notice, `Sunset` (RFC 8594), the
 * successor link and the successor named (docs/api-reference.md 4.4). Every removed interface answers through this one function.
 */
export function removalError(deprecation: Deprecation, successorLink?: string): GoneError {
  return new GoneError(removalNotice(deprecation), deprecationHeaders(deprecation, false, successorLink), { successor: deprecation.successor });
}

/** Throws the 410 for a removed interface; when it is kept alive, adds the deprecation headers and returns. */
export function removedInterface(reply: FastifyReply, revived: RevivedInterfaces, deprecation: Deprecation, successorLink?: string): void {
  if (!revived.has(deprecation.key)) throw removalError(deprecation, successorLink);
  reply.headers(deprecationHeaders(deprecation, true, successorLink));
}

/**
 * A kept-alive channel works as it did, with `Deprecation` and `Sunset` (docs/api-reference.md 4.4): an answer whose channels name
 * `nfccard` (possible only when an operator revived it) carries both.
 */
export function markRevivedChannels(reply: FastifyReply, channels: readonly string[]): void {
  if (channels.includes(REMOVED_NFC_CHANNEL)) reply.headers(deprecationHeaders(DEPRECATIONS.nfcCardChannel, true));
}
