// GET /claim: where a claim link (docs/api-reference.md 12) lands when someone opens it in a browser instead of the app.
// The code is in the fragment, which the browser never sends; the page has no script, so it cannot send it either.
import type { FastifyPluginAsync } from 'fastify';

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Open this link on your phone</title>
</head>
<body>
<main>
<h1>Open this link on your phone</h1>
<p>This link puts your phone in service as a key for your doors. It works only in the door app on the phone that
should open them.</p>
<ol>
<li>Install the door app your property manager named, if your phone does not have it yet.</li>
<li>Open this same link on that phone: from the message it came in, tap it there. The app takes it from there.</li>
</ol>
<p>Nothing was done by opening the link here: this page does not use it. Do not forward the link to anyone else; it
works once for the number of phones it was made for, and only until it expires. If it has expired or does not work,
ask your property manager for a new one.</p>
</main>
</body>
</html>
`;

const claimPageRoutes: FastifyPluginAsync = async (app) => {
  app.get('/claim', { logLevel: 'warn', schema: { hide: true } }, async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      // Static text: no script, style, image or form, and nothing from any other origin; no referrer leaves with a click.
      .header('content-security-policy', "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .send(PAGE),
  );
};

export default claimPageRoutes;
