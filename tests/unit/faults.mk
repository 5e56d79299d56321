# tests/unit/faults.mk: test_faults is linked with allocation wrappers (-Wl,--wrap), so that
# the N-th malloc/calloc/realloc/strdup of TraceLoom's own code can fail (test_faults.c).
# Included by the Makefile after its variables; these explicit rules replace the pattern
# rules for this one program (plain and ASan builds), which make test-unit and test-asan
# then run like every other unit test.
FAULTS_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup

$(BUILD)/tests/test_faults: tests/unit/test_faults.c tests/unit/tl_check.h $(EXT_HDRS) $(BUILD)/libtraceloom_core.a
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O1 -g -DSQLITE_CORE -DTL_FAULTS_WRAP $(INCLUDES) -Itests/unit -o $@ $< \
	  $(BUILD)/libtraceloom_core.a -lsqlite3 $(DEPS_LIBS) $(CHECK_LIBS) $(FAULTS_WRAP)

$(BUILD)/tests-asan/test_faults: tests/unit/test_faults.c tests/unit/tl_check.h $(EXT_HDRS) $(BUILD)/libtraceloom_asan.a
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O1 -g $(SAN) -DSQLITE_CORE -DTL_FAULTS_WRAP $(INCLUDES) -Itests/unit -o $@ $< \
	  $(BUILD)/libtraceloom_asan.a -lsqlite3 $(DEPS_LIBS) $(CHECK_LIBS) $(FAULTS_WRAP)
