// Schemas of the explain endpoint (docs/api-reference.md 8.6): the question asked and the lock's decision with its reasons.
import { Type } from '@sinclair/typebox';
import { ACCESS_CHECK_CODES, MAX_EXPLAINED_TICKETS } from '../shared/explain-rules.js';
import { COMMANDS } from '../shared/vocabulary.js';
import { defaultsOptional, Millis, named } from './common.js';
import { TicketStatusSchema } from './ticket.js';

export const AccessCheckQuery = defaultsOptional(
  Type.Object(
    {
      mobileDeviceId: Type.String({ minLength: 1, maxLength: 128, description: 'The phone (mobile device) asking.' }),
      securedObjectId: Type.String({ minLength: 1, maxLength: 128, description: 'The lock (secured object) asked.' }),
      at: Type.Optional(
        Millis(
          'The instant asked about, Unix milliseconds, server time (docs/api-reference.md 7.4\'s range). Default: now. The lock ' +
            'judges it on its own clock: `at` plus its estimated clock offset (answered as `lockTime`).',
        ),
      ),
      command: Type.Union([Type.Literal('open'), Type.Literal('clos'), Type.Literal('tokn')], {
        default: 'open',
        description: 'The command the phone sends: `open` (the default: "can this phone open that door?"), `clos` or `tokn`.',
      }),
      channel: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 32,
          description:
            'The channel the phone uses, e.g. `btlespp`. Default: the lock\'s first channel, the one a phone uses when ' +
            'nothing else is said. A channel the lock does not have is answered `channel-not-supported`, not refused.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const AccessCheckReasonSchema = named(
  'AccessCheckReason',
  Type.Object({
    code: Type.Union(
      ACCESS_CHECK_CODES.map((code) => Type.Literal(code)),
      {
        description:
          'Stable reason code. `valid`: the credential opens the lock. `no-token`: the phone has no ticket for the lock. ' +
          '`not-downloaded`: the phone holds no credential for the ticket (its other reasons, prefixed "Once downloaded", say ' +
          'what a downloaded one would meet). `key-not-published`: the credential\'s signing key was withdrawn (an emergency ' +
          'rotation); the phone must download again; with `allow`, the lock has not applied the key-set change yet and may still accept it. `key-not-known-yet`: the credential\'s signing key was announced after the last change the lock acknowledged, so the lock does not know it and refuses until it syncs or a phone brings it the key set. `binding-required`: the lock requires credentials bound to a phone key (docs/api-reference.md 11.2) and this one is bound to none; with `binding-not-applied` (and `allow`) the lock has not applied that policy yet, so the door may still open. `key-revoked`: the credential is bound to a phone key that was revoked, and the lock has applied it (11.4); with `key-revocation-not-applied` the lock has not yet, so the door may still open. `revoked`: revoked, and the lock applied it. `revocation-not-applied`: ' +
          'revoked, but the lock has not applied it yet, so the door may still open (the ticket\'s decision is then `allow`). ' +
          '`expired`; `credential-expired`: the ticket still runs but the phone\'s credential ran out (it renews on the next ' +
          'download); `not-yet-valid`; `outside-schedule` (with `nextWindowStart`); `command-not-granted`; ' +
          '`channel-not-granted`; `channel-not-supported`: the lock does not have that channel; `clock-drift`: the lock\'s ' +
          'clock is off by more than 30 s (it judges at `lockTime`). The rest name credentials a lock cannot read or trust: ' +
          '`malformed-credential`, `wrong-issuer`, `wrong-lock`, `lifetime-exceeds-maximum`, and a lock state the server ' +
          'never has: `invalid-time`, `lock-not-provisioned`, `lock-decommissioned`.',
      },
    ),
    message: Type.String({ description: 'What happened and what to do about it, for people.' }),
    nextWindowStart: Type.Optional(
      Type.Integer({ description: '`outside-schedule`: when the credential\'s next schedule window opens, Unix milliseconds of the lock\'s clock.' }),
    ),
    credentialAvailableFrom: Type.Optional(
      Type.Integer({ description: '`not-downloaded`: from when a download hands the credential out, Unix milliseconds (docs/api-reference.md 8.2).' }),
    ),
  }),
  { code: 'valid', message: 'The credential opens the lock.' },
);

const DecisionSchema = (description: string) => Type.Union([Type.Literal('allow'), Type.Literal('deny')], { description });

export const AccessCheckSchema = named(
  'AccessCheck',
  Type.Object({
    decision: DecisionSchema('`allow` when any ticket\'s credential opens the lock; `deny` otherwise.'),
    reasons: Type.Array(AccessCheckReasonSchema, {
      description:
        'Why, each code once: with `allow`, the reasons of the tickets that open (e.g. `revocation-not-applied`); with ' +
        '`deny`, those of every ticket, or `no-token`.',
    }),
    tokens: Type.Array(
      named(
        'AccessCheckTicket',
        Type.Object({
          id: Type.String({ description: 'The ticket id.' }),
          status: TicketStatusSchema,
          decision: DecisionSchema('The decision the lock takes for this ticket with what it has.'),
          reasons: Type.Array(AccessCheckReasonSchema, { description: 'Why, the lock\'s own reason first.' }),
        }),
        { id: '0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c', status: 'VALID', decision: 'allow', reasons: [{ code: 'valid', message: 'The credential opens the lock.' }] },
      ),
      {
        description:
          `The tickets of the phone for the lock, whatever their status, at most ${MAX_EXPLAINED_TICKETS}: first those whose ` +
          'credential may open the lock for the command and channel at the lock\'s time, then the others, each newest first.',
      },
    ),
    truncated: Type.Boolean({
      description:
        `The phone has more than ${MAX_EXPLAINED_TICKETS} tickets for the lock; only ${MAX_EXPLAINED_TICKETS} were judged, those that ` +
        'may open first, so the decision is the lock\'s unless more than that many may open.',
    }),
    at: Type.Integer({ description: 'The instant asked about, Unix milliseconds, server time.' }),
    lockTime: Type.Integer({ description: 'The same instant on the lock\'s clock (`at` plus its estimated offset): what the lock judges with.' }),
    command: Type.Unsafe<string>({ type: 'string', enum: [...COMMANDS], description: 'The command asked about.' }),
    channel: Type.String({ description: 'The channel asked about.' }),
  }),
  {
    decision: 'allow',
    reasons: [{ code: 'valid', message: 'The credential opens the lock.' }],
    tokens: [
      {
        id: '0b4f5b9e-3f3a-4c56-9a41-3c2b1f0e9d8c',
        status: 'VALID',
        decision: 'allow',
        reasons: [{ code: 'valid', message: 'The credential opens the lock.' }],
      },
    ],
    truncated: false,
    at: 1767254400000,
    lockTime: 1767254398800,
    command: 'open',
    channel: 'btlespp',
  },
);
