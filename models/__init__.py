"""What the adversary assumes: the discrete Gaussian mechanism, priors and model builders."""
