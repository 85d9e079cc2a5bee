"""Fitting: the weights, calibration and thresholds that ship, fitted on labelled data."""
