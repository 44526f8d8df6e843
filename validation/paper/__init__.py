"""The paper, reproduced: published values, records, claims, tables and the supplement."""
