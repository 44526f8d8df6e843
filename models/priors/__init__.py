"""The adversary's priors: for X2 given X1, from user files, over a histogram's cells."""
