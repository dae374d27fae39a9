// The acting caller of an authenticated request, as the services need it for tenant checks and audit events.
import type { FastifyRequest } from 'fastify';
import type { ActionContext } from '../../services/context.js';

export function actionContext(request: FastifyRequest): ActionContext {
  const { auth } = request;
  return {
    tenantId: auth.tenantId,
    actor: auth.userId ? `user:${auth.userId}` : `client:${auth.clientId}`,
    requestId: String(request.id),
  };
}
