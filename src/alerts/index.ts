// Alert delivery's one door: the server starts the deliverer (src/server/runtime.ts) from the
// providers file's `alerts:` entry; the graph reads notifications, silences and acknowledgements
// through the store (src/store/alerts.ts).
export { AlertDeliverer, DEFAULT_DELIVERY, retryAfter, type AlertDelivererDeps, type DeliverySettings, type DeliveryStep, type Outcome } from './deliverer.js';
export { slackPayload, webhookPayload, WEBHOOK_PAYLOAD_VERSION, type WebhookPayload } from './payload.js';
export { idempotencyKey, route, routesOf, type Route } from './routing.js';
