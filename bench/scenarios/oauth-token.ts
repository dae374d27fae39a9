// Scenario for the token endpoint: POST /oauth/token (client credentials) against node-oidc-provider's.
import { basicAuthorization } from '../requests.js';
import type { Scenario } from '../types.js';
import { createTenant } from './fixtures.js';

export const oauthTokenScenarios: Scenario[] = [
  {
    name: 'POST /oauth/token (client_credentials)',
    method: 'POST',
    path: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    // No scope: the client's every Operator API scope, as most operator backends ask.
    body: 'grant_type=client_credentials',
    baseline: 'oidc-provider',
    goalRatio: 3,
    async setup(context) {
      const { clientId, clientSecret } = await createTenant(context, 'bench-oauth-token');
      return { headers: { authorization: basicAuthorization(clientId, clientSecret) } };
    },
  },
];
