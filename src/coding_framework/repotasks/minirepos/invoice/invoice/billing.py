"""Whole invoices: totals after discounts and tax, printable lines, splitting and the balance due."""

from typing import Any

from invoice.discount import apply_discount, coupon_value, discount_rate
from invoice.items import line_total, subtotal
from invoice.money import format_money, from_cents, round_money, to_cents
from invoice.tax import tax_amount, tax_rate


def invoice_totals(
    items: list[dict[str, Any]], category: str = "standard", coupon: str = ""
) -> dict[str, float]:
    """Subtotal, discount (tier, then coupon), tax on the discounted amount and the total."""
    sub = subtotal(items)
    after_tier = apply_discount(sub, discount_rate(sub))
    after_coupon = round_money(after_tier - coupon_value(after_tier, coupon))
    tax = tax_amount(after_coupon, tax_rate(category))
    return {
        "subtotal": sub,
        "discount": round_money(sub - after_coupon),
        "tax": tax,
        "total": round_money(after_coupon + tax),
    }


def invoice_lines(items: list[dict[str, Any]], symbol: str = "$") -> list[str]:
    """One line per item, "name: qty x unit price = line total"."""
    lines = []
    for item in items:
        unit = format_money(item["price"], symbol)
        lines.append(f"{item['name']}: {item['qty']} x {unit} = {format_money(line_total(item), symbol)}")
    return lines


def split_bill(total: float, people: int) -> list[float]:
    """`total` shared by `people` to the cent; the first ones pay the leftover cents."""
    if people <= 0:
        raise ValueError("people must be positive")
    share, extra = divmod(to_cents(total), people)
    return [from_cents(share + 1) if index < extra else from_cents(share) for index in range(people)]


def balance_due(
    items: list[dict[str, Any]], paid: float, category: str = "standard", coupon: str = ""
) -> float:
    """What is left to pay on the invoice after `paid`; 0.0 once it is paid in full or more."""
    total = invoice_totals(items, category, coupon)["total"]
    if paid >= total:
        return 0.0
    return round_money(total - paid)
