// Ticket credentials (contract 6.3): the compact JWS a lock checks offline, signed with the tenant's ticket key.
import { SignJWT } from 'jose';
import type { TicketRecord } from '../db/repositories/ticket.repo.js';
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
      return new SignJWT({
        beginDate: ticket.beginDate,
        endDate: ticket.endDate,
        cmd: ticket.commands,
        chn: ticket.channels,
      })
        .setProtectedHeader({ alg: signing.alg, kid: signing.kid, typ: CREDENTIAL_TYPE })
        .setIssuer(issuer)
        .setJti(ticket.id)
        .setSubject(ticket.mobileDeviceId)
        .setAudience(ticket.securedObjectId)
        .setNotBefore(Math.floor(ticket.beginDate / 1000))
        .setExpirationTime(Math.ceil(ticket.endDate / 1000))
        .setIssuedAt(Math.floor(clock() / 1000))
        .sign(signing.privateKey);
    },
  };
}

export type CredentialService = ReturnType<typeof createCredentialService>;
