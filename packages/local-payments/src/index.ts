/** A local stand-in for Razorpay: its Orders, Payments and Refunds API subset, a clickable pay page and the same signed webhooks. */
export { startLocalPayments } from './local-payments.ts';
export type {
  LocalPayments, LocalPaymentsOptions, LocalOrder, LocalPayment, LocalRefund, LocalDispute,
  LocalPayAction, LocalPayOutcome, LocalPayOptions, LocalCheckoutFields, LocalApiFault, LocalCaptureOverride, LocalApiCallMatch,
} from './types.ts';
export type { LocalWebhook, LocalWebhookDelivery, LocalPaymentsLogger, WebhookRetryPolicy } from './webhooks.ts';
