// Razorpay Checkout in the browser: its script, loaded once when an owner first buys, and the
// fields its handler hands back (posted to the admin's checkout callback).
/** The fields Razorpay Checkout hands its `handler` after a successful payment. */
export interface CheckoutResult {
  razorpay_payment_id: string;
  razorpay_order_id: string;
  razorpay_signature: string;
}

/** The part of Razorpay Checkout's browser API the page uses (https://razorpay.com/docs/payments/payment-gateway/web-integration/standard/). */
interface RazorpayCheckout {
  open(): void;
  on(event: 'payment.failed', listener: (response: { error: { description?: string } }) => void): void;
}

/** Razorpay Checkout's constructor, as checkout.js defines it on window. */
type RazorpayConstructor = new (options: {
  key: string;
  order_id: string;
  /** Paise; Razorpay's own examples pass it as a string of digits, which keeps it off floats. */
  amount: string;
  currency: string;
  name: string;
  description: string;
  handler(result: CheckoutResult): void;
  modal: { ondismiss(): void };
}) => RazorpayCheckout;

/** Razorpay's Checkout script (allowed by the dashboard's CSP only when PAYMENT_PROVIDER=razorpay). */
const checkoutScriptUrl = 'https://checkout.razorpay.com/v1/checkout.js';
let checkoutScript: Promise<RazorpayConstructor> | undefined;

/** Loads checkout.js once per page and gives its Razorpay constructor. */
export function loadRazorpayCheckout(): Promise<RazorpayConstructor> {
  checkoutScript ??= new Promise<RazorpayConstructor>((resolve, reject) => {
    const script = document.createElement('script');
    script.src = checkoutScriptUrl;
    script.async = true;
    script.addEventListener('load', () => {
      const constructor = (window as unknown as { Razorpay?: RazorpayConstructor }).Razorpay;
      if (constructor === undefined) reject(new Error('Razorpay Checkout did not load.'));
      else resolve(constructor);
    });
    script.addEventListener('error', () => reject(new Error('Razorpay Checkout could not be loaded. Check the connection and try again.')));
    document.head.append(script);
  }).catch((error: unknown) => {
    checkoutScript = undefined; // the next Buy tries again
    throw error;
  });
  return checkoutScript;
}
