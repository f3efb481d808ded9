cat > sales.csv <<'CSV'
region,amount
north,10
south,5
east,7
north,3
east,1
south,20
CSV
