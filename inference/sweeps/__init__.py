"""Parameter sweeps: plans, resumable storage, netCDF files, Dask."""
