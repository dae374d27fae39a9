// Request pieces the baselines and the scenarios share: HTTP Basic credentials and a ticket body.

/** HTTP Basic per RFC 6749 2.3.1: id and secret form-urlencoded, then base64. */
export function basicAuthorization(id: string, secret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replaceAll('%20', '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

/** The ticket body of the `insert` reference and of `POST /operatorapi/tickets`: valid for a year from the run. */
export function newTicketBody(securedObjectId: string, mobileDeviceId: string) {
  return {
    securedObjectId,
    mobileDeviceId,
    beginDate: 0,
    endDate: Date.now() + 365 * 24 * 3600_000,
    commands: ['open'],
    channels: ['btlespp'],
  };
}
