// The OAuth document and its Swagger UI at /oauth/apidocs, in a context of their own: the OAuth routes' rate limit and
// RFC 6749 error format belong to the OAuth endpoints, not to their documentation.
import type { FastifyInstance } from 'fastify';
import apiDocs from '../../plugins/api-docs.js';
import { oauthOpenApiDocument } from './openapi-document.js';

const VERSION = '1.0.0';

export default async function oauthDocs(app: FastifyInstance) {
  const document = oauthOpenApiDocument(VERSION);
  await app.register(apiDocs, {
    title: document.info.title,
    description: document.info.description,
    version: VERSION,
    uiPrefix: '/oauth/apidocs',
    tags: document.tags,
    scopes: {},
    tokenUrl: '/oauth/token',
    document,
  });
}
