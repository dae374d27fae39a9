// Who is acting and in which request: what every change needs for its tenant check and its audit event.

export interface ActionContext {
  tenantId: string;
  /** `client:<id>`, `user:<id>`, or `cli`. */
  actor: string;
  requestId: string | null;
}

export type Clock = () => number;
