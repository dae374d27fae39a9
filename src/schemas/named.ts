// Names a model for the OpenAPI documents and gives it an example: plugins/openapi-components.ts makes every titled
// schema a component, so a generated client gets a named type and Swagger UI shows a real answer, not placeholders.
import type { Static, TSchema } from '@sinclair/typebox';

/**
 * `schema` titled `title` (its component name), with `example` (type-checked against the schema here, and validated
 * against it by test/ecosystem/openapi-examples.test.ts) as its example; without one it keeps its own `examples`.
 * A title is an annotation: validation and serialisation ignore it.
 */
export function named<T extends TSchema>(title: string, schema: T, example?: Static<T>): T {
  return example === undefined ? { ...schema, title } : { ...schema, title, examples: [example] };
}
