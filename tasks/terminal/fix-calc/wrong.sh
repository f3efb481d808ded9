sed -i 's/    a, b = sys.argv\[1\], sys.argv\[2\]/    a, b = float(sys.argv[1]), float(sys.argv[2])/' calc.py
