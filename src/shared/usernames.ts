// The username rule (docs/api-reference.md 3.7), one definition for the schema that checks requests and the services that check the rest.

export const MAX_USERNAME_LENGTH = 128;
/** Usernames may not hold `@` (it separates the tenant in `USER@TENANT`) or white space. */
export const USERNAME_PATTERN = `^[^@\\s]{1,${MAX_USERNAME_LENGTH}}$`;
