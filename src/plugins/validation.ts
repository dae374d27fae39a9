// Schema validation: bodies are checked strictly (no type coercion, unknown fields refused); query and path
// parameters arrive as strings, so they are coerced to the declared types.
import type { FastifySchemaCompiler } from 'fastify';
import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';

const shared: Options = {
  allErrors: true, // contract 4.3: name every bad field, not only the first
  removeAdditional: false, // contract 7.2: unknown fields are a 400, never silently dropped
  useDefaults: true,
  strict: false, // TypeBox adds keywords (e.g. `kind`) that are not JSON Schema
};

function withFormats(ajv: Ajv): Ajv {
  (addFormats as unknown as (ajv: Ajv) => Ajv)(ajv);
  return ajv;
}

const bodyAjv = withFormats(new Ajv({ ...shared, coerceTypes: false }));
const parameterAjv = withFormats(new Ajv({ ...shared, coerceTypes: 'array' }));

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : parameterAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};
