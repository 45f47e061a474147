/**
 * µ₹ of a top-up's credit that `amountPaise` of its price stands for: the credit in proportion to
 * the part of the price, credit_micros × amount_paise / price_paise, rounded down (the wallet keeps
 * the fraction of a µ₹, so the refunds of a top-up never take more than it credited). What a refund
 * debits from the wallet, and what its credit note takes back from the receipt voucher's credit.
 */
export function refundDebitMicros(topUp: { creditMicros: bigint; pricePaise: bigint }, amountPaise: bigint): bigint {
  return (topUp.creditMicros * amountPaise) / topUp.pricePaise;
}
