// The README's configuration table, generated from the config schema (a test keeps the README equal to it).
import { ConfigSchema } from '../src/config.js';

export function configTable(): string {
  const rows = Object.entries(ConfigSchema.properties).map(([name, schema]) => {
    const property = schema as { default?: unknown; description?: string };
    const fallback = property.default === undefined ? '' : `\`${String(property.default)}\``;
    return `| \`${name}\` | ${fallback} | ${property.description ?? ''} |`;
  });
  return ['| Variable | Default | Meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(`${configTable()}\n`);
