/**
 * Deterministic sandbox pricing: the same inputs always give the same price, in a quote and in
 * the created delivery. Integer minor units (cents), as the contract requires.
 */
import type { PackageType, Price } from '../provider/schemas';

export const PRICING = {
  base: 490,
  perDestination: 260,
  sizeSurcharge: { SMALL: 0, MEDIUM: 120, LARGE: 300, XLARGE: 650 } satisfies Record<PackageType, number>,
  food: 180,
} as const;

export interface PricedInput {
  is_food: boolean;
  destinations: readonly { package_type: PackageType }[];
}

export function priceFor(input: PricedInput, currency: string): Price {
  let amount = PRICING.base + (input.is_food ? PRICING.food : 0);
  for (const d of input.destinations) amount += PRICING.perDestination + PRICING.sizeSurcharge[d.package_type];
  return { amount, currency };
}
