/**
 * Money as a person reads it: major units with the currency's own number of decimals
 * ("13.10 EUR", "1310 JPY"). The contract's prices are integers in minor units; JSON keeps them
 * so, and everything a person reads (timeline, Web UI details, CLI) shows this form.
 * Plain integer arithmetic (no Intl), so workflow code gets the same text on every worker.
 */

/** ISO 4217 currencies whose minor unit is not 1/100 (all others have two decimals). */
const DECIMALS: Record<string, number> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  CLF: 4, UYW: 4,
};

/** The price guard's rule: a price at most `max`, in the same currency (another currency is never within it). */
export function withinMaxPrice(price: { amount: number; currency: string }, max: { amount: number; currency: string }): boolean {
  return price.currency === max.currency && price.amount <= max.amount;
}

export function formatMoney(p: { amount: number; currency: string }): string {
  const decimals = DECIMALS[p.currency] ?? 2;
  const sign = p.amount < 0 ? '-' : '';
  const digits = String(Math.abs(p.amount)).padStart(decimals + 1, '0');
  const major = decimals === 0 ? digits : `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
  return `${sign}${major} ${p.currency}`;
}
