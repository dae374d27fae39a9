// Claim-link fixtures for tests (docs/api-reference.md 12): creating claims over both APIs, a phone's look-up and
// redemption with its own key, and the token it then gets by private_key_jwt.
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { clientAssertion, keyProof, newKeyPair, type HolderKeyPair } from './holder-keys.js';
import { bearer } from './oauth.js';

export interface CreatedClaim {
  id: string;
  code: string;
  url: string;
  state: string;
  expiresAt: number;
  maxDevices: number;
  devices: string[];
}

/** POST /v1/residents/{id}/claims; fails the test unless 201. */
export async function residentClaim(t: TestApp, token: string, residentId: string, body: object = {}): Promise<CreatedClaim> {
  const response = await t.app.inject({ method: 'POST', url: `/v1/residents/${residentId}/claims`, headers: bearer(token), payload: body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

export function lookUp(t: TestApp, code: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'GET', url: `/deviceapi/claims/${encodeURIComponent(code)}`, headers });
}

export function redeemRequest(t: TestApp, code: string, body: object, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: `/deviceapi/claims/${encodeURIComponent(code)}`, headers, payload: body });
}

/** A nonce from a look-up of `code`; fails the test unless 200. */
export async function claimNonce(t: TestApp, code: string): Promise<string> {
  const response = await lookUp(t, code);
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { nonce: string }).nonce;
}

export interface Enrolled {
  key: HolderKeyPair;
  mobileDeviceId: string;
  clientId: string;
}

/** Looks the claim up and redeems it with a new key and a good proof; fails the test unless 201. */
export async function enrol(t: TestApp, code: string, name?: string): Promise<Enrolled> {
  const key = newKeyPair();
  const nonce = await claimNonce(t, code);
  const response = await redeemRequest(t, code, { publicKey: key.publicKey, proof: keyProof(t, key, nonce), ...(name ? { name } : {}) });
  expect(response.statusCode, response.body).toBe(201);
  const body = response.json() as { mobileDeviceId: string; clientId: string };
  return { key, mobileDeviceId: body.mobileDeviceId, clientId: body.clientId };
}

/** POST /oauth/token by private_key_jwt with the enrolled phone's key; the raw answer. */
export function assertionTokenRequest(t: TestApp, phone: Pick<Enrolled, 'key' | 'clientId'>): Promise<LightMyRequestResponse> {
  const seconds = Math.floor(t.app.services.clock() / 1000);
  return t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: clientAssertion(phone.key, phone.clientId, `${t.config.PUBLIC_URL}/oauth/token`, { iat: seconds, exp: seconds + 60 }),
    }).toString(),
  });
}

/** An access token of the enrolled phone's client; fails the test unless 200. */
export async function enrolledToken(t: TestApp, phone: Pick<Enrolled, 'key' | 'clientId'>): Promise<string> {
  const response = await assertionTokenRequest(t, phone);
  expect(response.statusCode, response.body).toBe(200);
  return response.json().access_token as string;
}
