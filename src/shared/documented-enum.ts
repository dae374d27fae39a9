// A schema keyword for the documents only: the values a field takes, listed as `enum` in the OpenAPI documents
// (plugins/openapi-components.ts) while the request validator ignores the keyword, because a service checks the value
// and answers a 422 that names the allowed ones (docs/api-reference.md 4.3) rather than the schema's bare 400.
export const DOCUMENTED_ENUM = 'x-documented-enum';
