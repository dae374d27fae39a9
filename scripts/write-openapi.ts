// `npm run openapi`: regenerates the committed OpenAPI documents in openapi/ from the route schemas.
import { writeFileSync } from 'node:fs';
import { formatDocument, servedDocuments } from './openapi-documents.js';

const documents = await servedDocuments();
for (const [file, document] of documents) {
  writeFileSync(new URL(`../openapi/${file}`, import.meta.url), formatDocument(document));
  process.stdout.write(`wrote openapi/${file}\n`);
}
