"""What a device can do: datasheet specs, measured calibrations and the store that keeps them."""
