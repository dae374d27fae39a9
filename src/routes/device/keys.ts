// The phone's and the lock's own keys on the Device API (docs/api-reference.md 11.1): a nonce for the key proof, and
// each bound client registering its device's or lock's public key.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { KeyRegistrationSchema, NonceSchema, RegisteredKeyAnswerSchema } from '../../schemas/holder-key.js';
import { noStoreResponse, ObjectIdParams } from '../../schemas/common.js';
import { problemResponses } from '../../schemas/problem.js';
import type { Services } from '../../services/index.js';
import { actionContext } from '../shared/context.js';

const PROOF_RULES =
  '`proof` is a compact JWS signed by the key being registered: header `{"alg": "ES256", "typ": "key-proof+jwt"}`, ' +
  'payload `{"aud": PUBLIC_URL, "nonce", "iat"}` with a nonce this client got from `POST /deviceapi/nonces` within 5 ' +
  'minutes (each works once, even for a proof that fails). A wrong, reused, expired or another client\'s nonce, another ' +
  '`aud`, an `iat` more than 5 minutes off, another `typ` or `alg` and a bad signature are `400` naming the reason; a ' +
  'private member in `publicKey` is `422`.';

const keyRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/nonces',
    {
      config: { scope: 'keys:register', noStore: true },
      schema: {
        tags: ['Keys'],
        security: [{ bearer: ['keys:register'] }],
        operationId: 'createKeyProofNonce',
        summary: 'Get a nonce for a key proof',
        description:
          'A single-use nonce for the `proof` of one key registration by this client, valid 5 minutes ' +
          '(docs/api-reference.md 11.1). Needs a client bound to a mobile device or a secured object.',
        response: { 200: noStoreResponse(NonceSchema, 'The nonce.'), ...problemResponses(413, 415) },
      },
    },
    async (request) => services.holderKeys.issueNonce(request.auth.tenantId, request.auth),
  );

  app.put(
    '/mobiledevices/:id/key',
    {
      config: { scope: 'keys:register' },
      schema: {
        tags: ['Keys'],
        security: [{ bearer: ['keys:register'] }],
        operationId: 'registerMobileDeviceKey',
        summary: 'Register the phone\'s key',
        description:
          'The phone\'s P-256 public key, registered by the client bound to the device (docs/api-reference.md 11.1). From ' +
          'then on its credentials carry `cnf.jkt` (11.2): only this phone, proving the key, opens with them. A new key ' +
          'replaces the old one, which is revoked at every lock in the same transaction (11.4); the same key again changes ' +
          'nothing. A key another device of the tenant holds, or a revoked one, is `409`. ' +
          PROOF_RULES,
        params: ObjectIdParams,
        body: KeyRegistrationSchema,
        response: { 200: { ...RegisteredKeyAnswerSchema, description: 'The registered key.' }, ...problemResponses(404, 409, 413, 414, 415, 422) },
      },
    },
    async (request) => services.holderKeys.registerDeviceKey(actionContext(request), request.auth, request.params.id, request.body),
  );

  app.put(
    '/securedobjects/:id/key',
    {
      config: { scope: 'keys:register' },
      schema: {
        tags: ['Keys'],
        security: [{ bearer: ['keys:register'] }],
        operationId: 'registerSecuredObjectKey',
        summary: 'Register the lock\'s key',
        description:
          'The P-256 public key the lock made at provisioning, registered by the client bound to the lock ' +
          '(docs/api-reference.md 11.1). Phones receive it with every ticket of the lock (`lockKey`) and check the lock ' +
          'with it before they show anything. Only while the lock has none: a lock with another key answers `409`, and an ' +
          'operator removes it first (`DELETE /operatorapi/securedobjects/{id}/key`), so a stolen lock client cannot swap ' +
          'the lock\'s identity. The same key again changes nothing. ' +
          PROOF_RULES,
        params: ObjectIdParams,
        body: KeyRegistrationSchema,
        response: { 200: { ...RegisteredKeyAnswerSchema, description: 'The registered key.' }, ...problemResponses(404, 409, 413, 414, 415, 422) },
      },
    },
    async (request) => services.holderKeys.registerLockKey(actionContext(request), request.auth, request.params.id, request.body),
  );
};

export default keyRoutes;
