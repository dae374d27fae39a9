// Ticket credentials (docs/contract.md 6.3): the compact JWS a lock checks offline, signed with the tenant's ticket key.
import type { TicketRecord } from '../db/repositories/ticket.repo.js';
import { signCompactJws } from './jws.js';
import type { KeyService } from './key.service.js';

/** Distinct from access tokens' `at+jwt`: neither is ever accepted as the other (RFC 8725 3.11). */
export const CREDENTIAL_TYPE = 'ticket+jwt';

export interface CredentialServiceOptions {
  issuer: string;
  keys: KeyService;
  clock: () => number;
}

export function createCredentialService({ issuer, keys, clock }: CredentialServiceOptions) {
  return {
    /** Signs one ticket. `nbf`/`exp` are whole seconds around the exact `beginDate`/`endDate` (ms). */
    async sign(ticket: TicketRecord): Promise<string> {
      const signing = await keys.signingKey(ticket.tenantId);
      return signCompactJws(signing, CREDENTIAL_TYPE, {
        beginDate: ticket.beginDate,
        endDate: ticket.endDate,
        cmd: ticket.commands,
        chn: ticket.channels,
        iss: issuer,
        jti: ticket.id,
        sub: ticket.mobileDeviceId,
        aud: ticket.securedObjectId,
        nbf: Math.floor(ticket.beginDate / 1000),
        exp: Math.ceil(ticket.endDate / 1000),
        iat: Math.floor(clock() / 1000),
      });
    },
  };
}

export type CredentialService = ReturnType<typeof createCredentialService>;
