! A Fortran program (`use mpi`): MPI_Iallreduce (also MPI_IN_PLACE),
! MPI_Ibcast, MPI_Ibarrier, MPI_Iallgather and MPI_Igather beside an
! MPI_Isend/MPI_Irecv ring, completed by MPI_Waitall (statuses checked),
! MPI_Waitany, MPI_Testall and MPI_Wait, results checked against the
! blocking collectives. On goal under both MPIs: MPICH's Fortran calls the
! C MPI_ functions (the layer's), Open MPI's the PMPI_ ones, which the
! layer's Fortran entry points stand in front of (mpi/fortran.c).
! ranks: 1 2 3 4
! expect: fortran: ok
! expect: goal-mpi \(rank 0\): MPI_Iallreduce: [1-9][0-9]* on goal, 0 to MPI
! expect: goal-mpi \(rank 0\): MPI_Igather: [1-9][0-9]* on goal, 0 to MPI
! expect: goal-mpi \(rank 0\): MPI_Iallgatherv: [1-9][0-9]* on goal, 0 to MPI
! expect: goal-mpi \(rank 0\): MPI_Ireduce_scatter_block: [1-9][0-9]* on goal, 0 to MPI
program t_fortran
  use mpi
  implicit none
  integer, parameter :: n = 500
  integer :: ierr, rank, nranks, it, i, idx, left, right, k
  integer :: reqs(4), stats(MPI_STATUS_SIZE, 4)
  integer :: x(n), y(n), z(n), msg_out, msg_in
  double precision :: b(n), bref(n)
  integer, allocatable :: all(:), allref(:), counts(:), displs(:)
  logical :: flag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  allocate(all(n * nranks), allref(n * nranks), counts(nranks), displs(nranks))
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  do it = 1, 20
    do i = 1, n
      x(i) = rank * 7 + i + it
      b(i) = -1d0
      if (rank == 0) b(i) = i * 0.25d0 + it
    end do
    msg_out = rank * 100 + it
    msg_in = -1
    call MPI_Irecv(msg_in, 1, MPI_INTEGER, left, it, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Iallreduce(x, y, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_Ibcast(b, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_Isend(msg_out, 1, MPI_INTEGER, right, it, MPI_COMM_WORLD, reqs(4), ierr)
    select case (mod(it, 3))
    case (0)
      call MPI_Waitall(4, reqs, stats, ierr)
      if (stats(MPI_SOURCE, 1) /= left .or. stats(MPI_TAG, 1) /= it) call fail('Waitall status', stats(MPI_SOURCE, 1))
    case (1)
      do k = 1, 4
        call MPI_Waitany(4, reqs, idx, MPI_STATUS_IGNORE, ierr)
        if (idx < 1 .or. idx > 4) call fail('Waitany index', idx)
      end do
    case default
      flag = .false.
      do while (.not. flag)
        call MPI_Testall(4, reqs, flag, MPI_STATUSES_IGNORE, ierr)
      end do
    end select
    do k = 1, 4
      if (reqs(k) /= MPI_REQUEST_NULL) call fail('request not MPI_REQUEST_NULL', k)
    end do
    if (msg_in /= left * 100 + it) call fail('ring message', msg_in)
    call MPI_Allreduce(x, z, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (any(y /= z)) call fail('Iallreduce differs from MPI_Allreduce', it)
    bref = -1d0
    if (rank == 0) bref = b
    call MPI_Bcast(bref, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
    if (any(b /= bref)) call fail('Ibcast differs from MPI_Bcast', it)
    ! In place, then a gather to the last rank, then a barrier.
    z = x
    call MPI_Iallreduce(MPI_IN_PLACE, z, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
    call MPI_Allreduce(x, y, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
    if (any(y /= z)) call fail('in-place Iallreduce differs', it)
    all = -1
    allref = -1
    call MPI_Igather(x, n, MPI_INTEGER, all, n, MPI_INTEGER, nranks - 1, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Iallgather(MPI_IN_PLACE, 0, MPI_INTEGER, allref, n, MPI_INTEGER, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_Ibarrier(MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE, ierr)
    call MPI_Gather(x, n, MPI_INTEGER, allref, n, MPI_INTEGER, nranks - 1, MPI_COMM_WORLD, ierr)
    if (rank == nranks - 1 .and. any(all /= allref)) call fail('Igather differs from MPI_Gather', it)
    ! The v-forms and reduce_scatter_block.
    do k = 1, nranks
      counts(k) = k + it
      displs(k) = (k - 1) * n
    end do
    all = -1
    allref = -1
    call MPI_Iallgatherv(x, rank + 1 + it, MPI_INTEGER, all, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
    call MPI_Allgatherv(x, rank + 1 + it, MPI_INTEGER, allref, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    if (any(all /= allref)) call fail('Iallgatherv differs from MPI_Allgatherv', it)
    call MPI_Ireduce_scatter_block(all, y, n / nranks, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
    call MPI_Reduce_scatter_block(all, z, n / nranks, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (any(y(1:n / nranks) /= z(1:n / nranks))) call fail('Ireduce_scatter_block differs', it)
  end do
  if (rank == 0) print '(a)', 'fortran: ok'
  call MPI_Finalize(ierr)

contains

  subroutine fail(what, v)
    character(*), intent(in) :: what
    integer, intent(in) :: v
    integer :: e
    print '(a,i0,a,a,a,i0)', 'FAIL rank ', rank, ': ', what, ': ', v
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine fail
end program t_fortran
