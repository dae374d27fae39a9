// One OpenAPI document and Swagger UI per API (docs/api-reference.md 1), built from the route schemas of that API's context.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemSchema } from '../schemas/problem.js';
import { nameDocumentSchemas } from './openapi-components.js';

/**
 * sha256 of the inline <style> in Swagger UI's top-bar logo (an SVG, swagger-ui-dist 5.34), which `style-src` must
 * allow. After an upgrade, test/ecosystem/swagger-ui.test.ts fails with chromium's CSP error, which names the new hash.
 */
const SWAGGER_LOGO_STYLE_HASH = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";

/**
 * The plugin's static CSP, adjusted. Its `upgrade-insecure-requests` makes a browser that opened the UI over plain
 * HTTP at any host but loopback (`http://acs.internal:8080`) fetch the UI's own scripts over https: a blank page.
 * Every asset and request of the UI is same-origin, so over https nothing needs upgrading either.
 */
function docsContentSecurityPolicy(header: string): string {
  return header
    .replace(/\s*upgrade-insecure-requests;?/, '')
    .replace("style-src 'self' https:", `style-src 'self' https: ${SWAGGER_LOGO_STYLE_HASH}`);
}

/** Every API's tokens come from the OAuth endpoints: each document links theirs (routes/oauth/docs.ts). */
const OAUTH_DOCUMENT_LINK =
  'Access tokens come from the OAuth 2.0 endpoints (grants, form fields, `USER@TENANT` user names, errors, key sets), ' +
  'documented at [/oauth/apidocs/](/oauth/apidocs/).';

export interface ApiDocsOptions {
  title: string;
  description: string;
  version: string;
  /** Where Swagger UI lives, e.g. `/operatorapi/apidocs`. */
  uiPrefix: string;
  /** The tag of every operation of this API, with what it groups: Swagger UI shows the description above the group. */
  tags: { name: string; description: string }[];
  /** The OAuth scopes of this API, for the bearer security scheme. */
  scopes: Record<string, string>;
  tokenUrl: string;
  /** The OAuth flow that gets this API's tokens: client credentials (default) or password (the Access API). */
  flow?: 'clientCredentials' | 'password';
  /**
   * Models no route carries that the API's readers decode themselves (the Device API's credential claims), listed in
   * `components.schemas` under their title.
   */
  schemas?: TSchema[];
  /**
   * A document written out rather than built from route schemas (the OAuth endpoints, which carry none): served as
   * it is, with the same Swagger UI. The fields above that describe a built document are then unused.
   */
  document?: Record<string, unknown>;
}

export default fp(
  async function apiDocs(app: FastifyInstance, options: ApiDocsOptions) {
    app.addSchema(ProblemSchema);
    if (options.document) {
      await app.register(swagger, { mode: 'static', specification: { document: options.document as never } });
    } else await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: options.title,
          description: `${options.description}\n\n${OAUTH_DOCUMENT_LINK}`,
          version: options.version,
          license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
        },
        // Relative (OpenAPI 3.0.3 section 4.7.5): the server that serves the document; the paths hold the API prefix.
        // An absolute PUBLIC_URL would make the committed documents differ between deployments.
        servers: [{ url: '/', description: 'The server this document is served by.' }],
        tags: options.tags,
        components: {
          securitySchemes: {
            bearer: {
              type: 'oauth2',
              description: 'An RFC 9068 JWT access token sent as `Authorization: Bearer <token>`.',
              flows: { [options.flow ?? 'clientCredentials']: { tokenUrl: options.tokenUrl, scopes: options.scopes } },
            },
          },
        },
      },
      // Every titled model a component (openapi-components.ts), so a generated client gets a named type for each.
      transformObject: (documentObject) =>
        nameDocumentSchemas('openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject, options.schemas),
      refResolver: {
        buildLocalReference: (json, _baseUri, _fragment, index) => String(json.$id ?? `def-${index}`),
      },
    });
    await app.register(swaggerUi, { routePrefix: options.uiPrefix, staticCSP: true, transformStaticCSP: docsContentSecurityPolicy });
    // `{uiPrefix}/index.html` is the documented entry of every UI (docs/api-reference.md 1); the plugin serves the page
    // at `{uiPrefix}/` only, so each API's entry redirects there, none forgotten.
    app.get(`${options.uiPrefix}/index.html`, { schema: { hide: true } }, async (_request, reply) => reply.redirect(`${options.uiPrefix}/`));
  },
  { name: 'api-docs' },
);
