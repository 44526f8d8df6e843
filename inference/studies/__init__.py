"""Decision studies: exact P[correct], Monte Carlo at the paper's scale, finite-draw laws."""
