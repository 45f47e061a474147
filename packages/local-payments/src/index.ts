/** A local stand-in for Razorpay: its Orders, Payments and Refunds API subset, a clickable pay page and the same signed webhooks. */
export {
  startLocalPayments,
  type LocalPayments, type LocalPaymentsOptions, type LocalOrder, type LocalPayment, type LocalRefund, type LocalDispute,
  type LocalPayAction, type LocalPayOutcome, type LocalPayOptions, type LocalCheckoutFields, type LocalApiFault, type LocalCaptureOverride, type LocalApiCallMatch,
} from './local-payments.ts';
export type { LocalWebhook, LocalWebhookDelivery, LocalPaymentsLogger, WebhookRetryPolicy } from './webhooks.ts';
