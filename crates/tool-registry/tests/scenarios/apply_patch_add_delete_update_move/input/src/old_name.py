value = 1
other = 0
