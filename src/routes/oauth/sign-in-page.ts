// The authorization endpoint's pages (docs/api-reference.md 13): the sign-in form and the error page. Plain HTML with
// no script and no resource from anywhere, so the Content-Security-Policy can forbid everything but one inline style.

/** The request parameters the form carries back as hidden fields (RFC 6749 4.1.1, RFC 7636 4.3). */
export const CARRIED_PARAMETERS = ['response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state'] as const;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (character) => ESCAPES[character]!);
}

/** The page's one stylesheet, allowed by its nonce. */
const STYLE = `
  body { font-family: system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1b1f24; }
  main { max-width: 24rem; margin: 4rem auto; padding: 2rem; background: #fff; border-radius: 0.5rem; box-shadow: 0 1px 3px #0003; }
  h1 { font-size: 1.4rem; margin-top: 0; }
  label { display: block; margin-top: 1rem; font-weight: 600; }
  input[type=text], input[type=password] { box-sizing: border-box; width: 100%; padding: 0.5rem; margin-top: 0.25rem; font-size: 1rem; border: 1px solid #6b7280; border-radius: 0.25rem; }
  input:focus, button:focus { outline: 3px solid #1d4ed8; outline-offset: 2px; }
  button { margin-top: 1.5rem; width: 100%; padding: 0.6rem; font-size: 1rem; color: #fff; background: #1d4ed8; border: 0; border-radius: 0.25rem; cursor: pointer; }
  .error { padding: 0.75rem; color: #7f1d1d; background: #fee2e2; border-radius: 0.25rem; }
`;

function page(title: string, nonce: string, body: string): string {
  return (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title>` +
    `<style nonce="${nonce}">${STYLE}</style></head><body><main>${body}</main></body></html>\n`
  );
}

export interface SignInFormInput {
  parameters: Partial<Record<(typeof CARRIED_PARAMETERS)[number], string>>;
  /** Where the form posts: PUBLIC_URL's `/oauth/authorize`. */
  action: string;
  csrfToken: string;
  nonce: string;
  /** The one generic error a refused sign-in shows; absent on the first showing. */
  error?: string;
  /** The login typed before, shown again (never the password). */
  username?: string;
}

export function signInForm(input: SignInFormInput): string {
  const hidden = CARRIED_PARAMETERS.filter((name) => input.parameters[name] !== undefined)
    .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(input.parameters[name]!)}">`)
    .join('');
  const error = input.error ? `<p class="error" role="alert" id="sign-in-error">${escapeHtml(input.error)}</p>` : '';
  const described = input.error ? ' aria-describedby="sign-in-error" aria-invalid="true"' : '';
  return page(
    'Sign in',
    input.nonce,
    '<h1>Sign in to the console</h1>' +
      error +
      `<form method="post" action="${escapeHtml(input.action)}" autocomplete="on">` +
      `<input type="hidden" name="csrf_token" value="${escapeHtml(input.csrfToken)}">` +
      hidden +
      '<label for="username">User (USER@TENANT)</label>' +
      `<input type="text" id="username" name="username" required autocomplete="username" autocapitalize="none" spellcheck="false" value="${escapeHtml(input.username ?? '')}"${described}>` +
      '<label for="password">Password</label>' +
      `<input type="password" id="password" name="password" required autocomplete="current-password"${described}>` +
      '<button type="submit">Sign in</button>' +
      '</form>',
  );
}

export function errorPage(description: string, nonce: string): string {
  return page(
    'Sign-in request refused',
    nonce,
    `<h1>This sign-in request cannot be answered</h1><p class="error" role="alert">${escapeHtml(description)}</p>` +
      '<p>Start the sign-in again from the application you came from.</p>',
  );
}
