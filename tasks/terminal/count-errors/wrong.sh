grep -h ERROR logs/*.log | wc -l > errors.txt
