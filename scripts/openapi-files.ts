// The committed OpenAPI documents (openapi/<api>.json): which APIs have one, and reading one. No app imports, so
// the response validator of every test app and the client generator load this without building the server.
import { readFileSync } from 'node:fs';

/** Each API's name (its committed file is openapi/<api>.json) and the path its document is served at. */
export const OPENAPI_DOCUMENTS = [
  { api: 'operatorapi', file: 'operatorapi.json', path: '/operatorapi/apidocs/json' },
  { api: 'accessapi', file: 'accessapi.json', path: '/v1/swagger-ui/json' },
  { api: 'deviceapi', file: 'deviceapi.json', path: '/deviceapi/apidocs/json' },
  { api: 'oauth', file: 'oauth.json', path: '/oauth/apidocs/json' },
] as const;

export type DocumentedApi = (typeof OPENAPI_DOCUMENTS)[number]['api'];

export const DOCUMENTED_APIS: readonly DocumentedApi[] = OPENAPI_DOCUMENTS.map((document) => document.api);

/** The committed file's location, for readers and writers alike. */
export function committedDocumentUrl(api: DocumentedApi): URL {
  return new URL(`../openapi/${api}.json`, import.meta.url);
}

/** The committed document of one API, parsed. */
export function readCommittedDocument<Document = unknown>(api: DocumentedApi): Document {
  return JSON.parse(readFileSync(committedDocumentUrl(api), 'utf8')) as Document;
}
