chmod u+x bin/*.sh && chmod 600 secrets/key.txt
