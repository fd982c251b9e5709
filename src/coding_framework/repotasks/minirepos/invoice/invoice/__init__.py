"""invoice: line items, subtotals, discounts, tax and totals, all rounded to cents."""
