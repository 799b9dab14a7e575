value = 2
other = 0
