// Query-string schema helpers shared by every list route.
import type { TObject } from '@sinclair/typebox';

/**
 * Query parameters with a default are optional to clients (validation fills the default in), yet handlers always
 * see a value: the schema drops them from `required`, the static type keeps them.
 */
export function defaultsOptional<T extends TObject>(schema: T): T {
  const required = (schema.required ?? []).filter((name) => (schema.properties[name] as { default?: unknown }).default === undefined);
  const { required: _required, ...rest } = schema;
  return (required.length > 0 ? { ...rest, required } : rest) as T;
}
