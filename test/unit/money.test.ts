import { formatMoney } from '../../provider/money';

describe('money as a person reads it', () => {
  it('shows major units with the currency’s decimals', () => {
    expect(formatMoney({ amount: 1310, currency: 'EUR' })).toBe('13.10 EUR');
    expect(formatMoney({ amount: 5, currency: 'EUR' })).toBe('0.05 EUR');
    expect(formatMoney({ amount: 0, currency: 'USD' })).toBe('0.00 USD');
    expect(formatMoney({ amount: 1310, currency: 'JPY' })).toBe('1310 JPY');
    expect(formatMoney({ amount: 1310, currency: 'KWD' })).toBe('1.310 KWD');
    expect(formatMoney({ amount: -250, currency: 'GBP' })).toBe('-2.50 GBP');
  });
});
