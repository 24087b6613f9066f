/** Sandbox pricing is deterministic, integer, and follows the documented table. */
import { PACKAGE_TYPES, PriceSchema } from '../../provider/schemas';
import { priceFor, PRICING } from '../../simulator/pricing';

test('base + per destination + size surcharge + food', () => {
  expect(priceFor({ is_food: false, destinations: [{ package_type: 'SMALL' }] }, 'EUR')).toEqual({ amount: 750, currency: 'EUR' });
  expect(priceFor({ is_food: true, destinations: [{ package_type: 'MEDIUM' }] }, 'EUR')).toEqual({ amount: 490 + 180 + 260 + 120, currency: 'EUR' });
  expect(priceFor({ is_food: false, destinations: [{ package_type: 'LARGE' }, { package_type: 'XLARGE' }] }, 'CHF')).toEqual({
    amount: 490 + 2 * 260 + 300 + 650,
    currency: 'CHF',
  });
});

test('every package type has a surcharge; prices are valid contract prices and deterministic', () => {
  for (const p of PACKAGE_TYPES) {
    expect(Number.isInteger(PRICING.sizeSurcharge[p])).toBe(true);
    const input = { is_food: p === 'LARGE', destinations: Array.from({ length: 3 }, () => ({ package_type: p })) };
    const a = priceFor(input, 'EUR');
    expect(PriceSchema.parse(a)).toEqual(a);
    expect(priceFor(input, 'EUR')).toEqual(a);
  }
});

test('the order of destinations does not change the price', () => {
  const a = priceFor({ is_food: false, destinations: [{ package_type: 'SMALL' }, { package_type: 'XLARGE' }] }, 'EUR');
  const b = priceFor({ is_food: false, destinations: [{ package_type: 'XLARGE' }, { package_type: 'SMALL' }] }, 'EUR');
  expect(a).toEqual(b);
});
