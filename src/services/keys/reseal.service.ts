// Changing SECRETS_KEY (README, "SECRETS_KEY"): every value sealed under a previous key is sealed again under the
// current one, batch by batch, so that the previous key can then be dropped.
import type { Database } from '../../db/database.js';
import { SEALED_KINDS, listSealedValues, replaceSealedValues, type SealedKind } from '../../db/repositories/sealed-values.repo.js';
import { resealUnderCurrent, type SecretsKey } from '../../shared/crypto.js';
import { SEALED_AAD } from './sealed-values.js';

/** The additional data of each kind's value, from its row key (sealed-values.repo.ts lists the key columns). */
const AAD_OF: Record<SealedKind, (key: string[]) => string> = {
  signingKey: ([kid]) => SEALED_AAD.signingKey(kid!),
  credential: ([tenantId, ticketId]) => SEALED_AAD.credential(tenantId!, ticketId!),
  webhookSecret: ([tenantId, webhookId]) => SEALED_AAD.webhookSecret(tenantId!, webhookId!),
  previousWebhookSecret: ([tenantId, webhookId]) => SEALED_AAD.webhookSecret(tenantId!, webhookId!),
};

/** Rows per read and per UPDATE: each batch is one statement, so a crash loses at most the batch under way. */
const BATCH_SIZE = 500;
/** A value changed while it was re-sealed is looked at again in another pass, at most this many passes in all. */
const MAX_PASSES = 3;

export interface ReencryptReport {
  /** Values sealed again under the current key, by kind. */
  resealed: Record<SealedKind, number>;
  /** Values that already opened under the current key. */
  alreadyCurrent: number;
  /** Values no given key opens (sealed under a key not in SECRETS_KEY_PREVIOUS, or damaged): left as they are. */
  unopenable: { kind: SealedKind; key: string[] }[];
  /** Values that changed under every pass (a server still sealing under a previous key): run it again. */
  stillChanging: number;
}

export function createSecretsKeyService({ db, secretsKey }: { db: Database; secretsKey: SecretsKey }) {
  /** One pass over every sealed value; the values that changed between read and write, to look at again. */
  async function pass(report: ReencryptReport, only: Set<string> | null, unopenableSeen: Set<string>): Promise<Set<string>> {
    const changed = new Set<string>();
    for (const kind of SEALED_KINDS) {
      let after: string[] | null = null;
      for (;;) {
        const page = await listSealedValues(db, kind, after, BATCH_SIZE);
        if (page.length === 0) break;
        after = page[page.length - 1]!.key;
        const replacements: { key: string[]; was: Buffer; now: Buffer }[] = [];
        for (const value of page) {
          const id = `${kind}:${value.key.join('/')}`;
          if (only && !only.has(id)) continue;
          let resealed: Buffer | null;
          try {
            resealed = resealUnderCurrent(secretsKey, value.sealed, AAD_OF[kind](value.key));
          } catch {
            // A second pass looks at some values again: each is listed once. A Set, not a search of the list: with
            // a wrong key every value of a large database is unopenable.
            if (!unopenableSeen.has(id)) {
              unopenableSeen.add(id);
              report.unopenable.push({ kind, key: value.key });
            }
            continue;
          }
          // A second look (only) at a batch sees the values this run wrote as current: counted once, in the first pass.
          if (resealed === null) report.alreadyCurrent += only ? 0 : 1;
          else replacements.push({ key: value.key, was: value.sealed, now: resealed });
        }
        const replaced = await replaceSealedValues(db, kind, replacements);
        report.resealed[kind] += replaced;
        if (replaced < replacements.length) {
          // Which ones changed meanwhile is not returned; all of this batch's are looked at again (cheap: those
          // written now open under the current key and only count as current).
          for (const replacement of replacements) changed.add(`${kind}:${replacement.key.join('/')}`);
        }
      }
    }
    return changed;
  }

  return {
    /**
     * Seals every value that opens only under a previous key again under the current one. Idempotent: run again, it
     * finds them current. Values that change meanwhile (a secret rotated, a credential signed again) are sealed
     * under the current key by the server that changes them, provided every server already runs with it.
     */
    async reencrypt(): Promise<ReencryptReport> {
      const report: ReencryptReport = {
        resealed: Object.fromEntries(SEALED_KINDS.map((kind) => [kind, 0])) as Record<SealedKind, number>,
        alreadyCurrent: 0,
        unopenable: [],
        stillChanging: 0,
      };
      const unopenableSeen = new Set<string>();
      let again = await pass(report, null, unopenableSeen);
      for (let passes = 1; again.size > 0 && passes < MAX_PASSES; passes++) again = await pass(report, again, unopenableSeen);
      report.stillChanging = again.size;
      return report;
    },
  };
}

export type SecretsKeyService = ReturnType<typeof createSecretsKeyService>;
