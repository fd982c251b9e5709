"""textkit: small string utilities (padding, tokenizing, case conversion, wrapping, slugs)."""
