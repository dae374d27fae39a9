// The two-tenant set-up of the isolation tests: two tenants, their management client tokens, and their locks and devices.
import type { TestApp } from './app.js';
import { clientToken, createTenant, type TenantFixture } from './oauth.js';
import { device, lock } from './operator.js';

/** What one tenant registers over the Operator API as the fixture is made: locks first, then devices, in order. */
export interface TenantSeed {
  locks?: string[];
  devices?: string[];
}

export interface TwoTenants {
  /** The tenant the tests act as (named `acme`). */
  acme: TenantFixture;
  /** Another tenant (named `other`), whose rows the tests must never see or change (docs/api-reference.md 2: tenant isolation). */
  other: TenantFixture;
  /** Management client token of `acme` (Operator API, aud operatorapi). */
  token: string;
  /** Management client token of `other`. */
  otherToken: string;
}

/**
 * Creates the tenants `acme` and `other`, a management client token of each, then `acme`'s locks and devices and
 * then `other`'s; fails the test when the server refuses any of them.
 */
export async function twoTenants(t: TestApp, seeds: { acme?: TenantSeed; other?: TenantSeed } = {}): Promise<TwoTenants> {
  const acme = await createTenant(t.app, 'acme');
  const other = await createTenant(t.app, 'other');
  const token = await clientToken(t.app, acme);
  const otherToken = await clientToken(t.app, other);
  for (const [auth, seed] of [
    [token, seeds.acme],
    [otherToken, seeds.other],
  ] as const) {
    for (const id of seed?.locks ?? []) await lock(t, auth, id);
    for (const id of seed?.devices ?? []) await device(t, auth, id);
  }
  return { acme, other, token, otherToken };
}
